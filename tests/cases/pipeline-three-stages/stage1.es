in long A
out long B

( A(x) { !>B(x * 2); } )*
