in double Wait
out {} Done

( Wait(m) elapse[m minutes]() { !>Done({}); } )*
