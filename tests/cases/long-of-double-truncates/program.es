in double D
out long L

( D(d) { !>L(long(d)); } )*
