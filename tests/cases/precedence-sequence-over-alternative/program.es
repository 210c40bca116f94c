in {} A, {} B, {} C
out long X

( A() B() { !>X(1); } | C() { !>X(2); } )*
