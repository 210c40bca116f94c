in {} Go
out {} Done

( Go() elapse[10 sec]() { !>Done({}); } )*
