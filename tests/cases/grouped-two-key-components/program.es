in {string site; long unit; double temp;} Reading
  group(Reading.site, Reading.unit)
out {string site; long unit; double peak;} Peak

{ peak = -1000.0; }
( Reading(r)
  { r.temp > peak ?
      { peak = r.temp;
        !>Peak({site: group[0], unit: group[1], peak: peak});
      }
  }
)*
