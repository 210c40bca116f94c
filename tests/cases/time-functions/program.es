in time T
out time S, time Ms, time M, time H, long Min

( T(t)
  { !>S(secondsAfter(40, t));
    !>Ms(millisecondsAfter(1500, t));
    !>M(minutesAfter(2, t));
    !>H(hoursAfter(25, t));
    !>Min(minute(t));
  }
)*
