in {string k; long s;} Arm group(Arm.k)
out string Fire

( Arm(a) elapse[a.s seconds]() { !>Fire(a.k); } )*
