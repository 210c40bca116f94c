in {} A, {} B, {} C
out long Out

( ( A() { x = 1; } B() | A() { x = 2; } C() ) { !>Out(x); } )*
