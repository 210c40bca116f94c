in {} A
out long T

elapse[5 sec]() { !>T(1); } A()
