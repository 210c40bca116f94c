in {} A, {} B, {} C
out string O

A() { !>O("a"); } ( B() { !>O("b"); } )?
