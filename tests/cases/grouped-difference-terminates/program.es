in string A group(A), string B group(B), string C group(C)
out long X

( A() { !>X(1); } ( B() C() )? ) - ( A() B() .* )
