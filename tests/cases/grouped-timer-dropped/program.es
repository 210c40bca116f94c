in string Open group(Open), string Close group(Close)
out string Closed, string Expired

Open(o)
( Close() { !>Closed(o); }
| elapse[1 minute]() { !>Expired(o); }
)
