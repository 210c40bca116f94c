in {} A, {} B, {} C
out long Done

( A() B()+ C() { !>Done(1); } )*
