in {string room; long n;} Enter group(Enter.room, Enter.n)
out {string room; long n; time at;} Quiet

{ r = group[0]; }
Enter()* elapse[10 sec](t) { !>Quiet({room: r, n: group[1], at: t}); }
