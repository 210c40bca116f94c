in string Start group(Start), string Stop group(Stop)
out string Expired, string Stopped

Start(s)
( elapse[5 sec]() { !>Expired(s); }
| Stop(x) { !>Stopped(x); }
)
