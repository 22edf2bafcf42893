"""Reading and writing cuzk daemon logs.

`emit` formats the lines cuzk prints (for our pipeline and the model); `parse` reads a
log as a stream of records; `timeline` rebuilds per-partition timelines and per-GPU
occupancy from them; `findings` names what went wrong, with the lines that show it;
`calibrate` fits a profile from the measured figures; `scenario_out` writes the
scenario the log ran; `from_result` turns a model run into a cuzk log.
"""
