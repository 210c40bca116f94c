in long A group(A)
out long O
( elapse[0 sec]() { !>O(1); } A(x) { !>O(x); } )*
