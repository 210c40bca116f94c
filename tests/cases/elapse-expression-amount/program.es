in {long x1; long x2;} Wait
out {} Done

( Wait(w) elapsed[(w.x1 + w.x2)/2 minutes]() { !>Done({}); } )*
