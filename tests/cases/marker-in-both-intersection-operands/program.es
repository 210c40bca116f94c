in long A, long B
out long O

( A(x) B() & A() B(y) ) { !>O(x * 10 + y); }
