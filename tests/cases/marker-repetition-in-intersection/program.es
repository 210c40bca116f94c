in long A, {} B
out long O

( A(x)* & ( A() A() )* ) B() { !>O(x); }
