in {} A, {} B, {} C
out long T

A() ( B() | elapse[5 sec]() { !>T(1); } ) C() { !>T(2); }
