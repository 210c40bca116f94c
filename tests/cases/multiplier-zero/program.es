in {} A, {} B
out long Done

( A(){0} B() { !>Done(1); } )*
