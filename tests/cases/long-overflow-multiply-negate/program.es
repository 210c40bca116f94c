in long A
out long Twice, long Neg

( A(a) { !>Twice(a * 2); !>Neg(-a); } )*
