in string High group(High)
out {string room; long count;} Alert

{ n = 0; }
( High() { n = n + 1; } )+
elapse[1 minute]() { !>Alert({room: group[0], count: n}); }
