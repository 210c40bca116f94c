in long A
out long X

( A(z) { !>X(1); } elapse[(10 / z) sec]() { !>X(2); } )*
