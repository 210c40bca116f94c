in long B
out long C

( B(x) { !>C(x); } )*
