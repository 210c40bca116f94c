in {} Go
out long Step, time At

Go() { k = 0; }
( elapse[1 sec]() { k = k + 1; !>Step(k); !>At(now()); } ){3}
