in {} A, {} B, {} C
out string Log

( A() { !>Log("loop"); } B() )*
A() { !>Log("tail"); }
C() { !>Log("done"); }
