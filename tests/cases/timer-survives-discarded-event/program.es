in {} Start, {} Stop
out {} Timeout, {} Stopped

( Start()
  ( Stop() { !>Stopped({}); }
  | elapse[10 sec]() { !>Timeout({}); }
  )
)*
