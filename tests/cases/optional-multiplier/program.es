in {} Start, {} Mid, {} End
out long Done

( Start() { n = 0; }
  ( Mid() { n = n + 1; } )?
  End() { !>Done(n); }
)*
