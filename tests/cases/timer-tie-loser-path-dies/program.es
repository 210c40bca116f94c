in {} A, {} B, {} C
out long X

A() ( elapse[5 sec]() { !>X(1); } B() | elapse[5 sec]() { !>X(2); } C() )
