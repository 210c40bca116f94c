in time Until, {} B
out long X

( Until(t) arrive[(t)]() { !>X(1); } B() { !>X(2); } )*
