in string Arm group(Arm)
out string Fire

( Arm(s) arrive[.:.:00]() { !>Fire(s); } )*
