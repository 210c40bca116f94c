in {} A, {} B
out {} Late

A() ( B() | elapse[5 sec]() { !>Late({}); } )?
