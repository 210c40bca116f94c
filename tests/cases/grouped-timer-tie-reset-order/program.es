in string Tick group(Tick)
out string Minute

( Tick() | arrive[.:.:00]() { !>Minute(group[0]); } )*
