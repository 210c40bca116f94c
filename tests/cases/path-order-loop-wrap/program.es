in {} A, {} B
out string Log

( { !>Log("head"); } A() { !>Log("body"); } )*
{ !>Log("end"); }
B()
