in {} A, {} B, {} C
out long X

( A() B() { !>X(1); } | A() C() { !>X(2); } ) & ( . C() )
