"""The fusion-anomaly workflow around one fusion_switch.cfg (pure: files and data, no protocol).

State lives next to the configuration in a `.fusion-switch/` folder so that it survives server
restarts: the text saved before "all off" (for restore) and the last comparison's summary.
"""
