in {} A, {} B, {} C
out long X

( A() { !>X(1); } B() | A() { !>X(2); } C() ) & ( A() B() )
