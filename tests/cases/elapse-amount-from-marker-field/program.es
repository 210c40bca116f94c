in {string id; double wait;} Start, string Stop
out string Expired, string Stopped

( Start(s)
  ( elapse[(s.wait) seconds]() { !>Expired(s.id); }
  | Stop(x) { !>Stopped(x); }
  )
)*
