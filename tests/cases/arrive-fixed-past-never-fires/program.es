in {} A
out long X

( A() { !>X(1); } | arrive[2020-01-01 00:00]() { !>X(2); } )*
