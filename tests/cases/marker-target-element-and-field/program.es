// An event marker's variable may be an array element or a structure field (document 2.3, 2.5).
in {string id; double v;} R, long N
out double O, time T
{ rs = new {string id; double v;}[2]; box = {last: 0}; i = 0; ts = new time[1]; }
( R(rs[i]) { i = i + 1; !>O(rs[0].v + rs[1].v); }
| N(box.last) { !>O(double(box.last)); }
| elapse[5 seconds](ts[0]) { !>T(ts[0]); }
)*
