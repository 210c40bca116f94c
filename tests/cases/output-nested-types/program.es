type Point = {double x; double y;}
type Polygon = Point[]
in {string name; Polygon boundary;} SetZone
out {string name; Point first; boolean closed; Polygon boundary;} Zone

( SetZone(z)
  { !>Zone({ name: z.name,
             first: z.boundary[0],
             closed: z.boundary[0].x == z.boundary[2].x && z.boundary[0].y == z.boundary[2].y,
             boundary: z.boundary });
  }
)*
