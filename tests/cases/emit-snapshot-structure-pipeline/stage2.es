in {long f; long g;} S
out {long f; long g;} Echo

( S(v) { !>Echo(v); } )*
