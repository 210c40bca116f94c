in {} Go
out {} Late

Go() elapse[7 sec]() { !>Late({}); }
