in long A group(A % 2), long B group(B % 2)
out long L

{ !>L(group[0]); }
( B() A() { !>L(100); }
| elapse[5 seconds]() { !>L(5); }
)
