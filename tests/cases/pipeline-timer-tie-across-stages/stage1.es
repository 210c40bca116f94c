out {} P

( elapse[10 sec]() { !>P({}); } )*
