in long C
out long D

( C(x) { x > 4 ? !>D(x); } )*
