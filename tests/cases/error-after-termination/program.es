in {} A
out long X

A() { !>X(1); }
