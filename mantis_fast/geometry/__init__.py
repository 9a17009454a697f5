"""Pure geometry: where a point given in one coordinate space lands in another.

``coords`` holds the coordinate contracts between the image a model sees and the screen
(scaling, normalized 0..1000 in a working area, clamping); ``displays`` the monitors of a screen
as rectangles of the root window and the mapping between display-local and global pixels.
No function here talks to an X server.
"""
