in {} A, {} B
out long Done

( A(){2,3} B() { !>Done(1); } )*
