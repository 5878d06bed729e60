"""Reading what CANN writes: dump files and folders, graphs, and the formats inside them.

One module per format: ``protowire`` (the protobuf wire decoder), ``dump`` (binary dump files and
``.npy``), ``dumpdir`` (dump folders), ``dtypes`` and ``formats`` (the codes inside headers),
``layout`` (device layouts back to host layouts), ``graph`` (the graph model and atc JSON),
``graph_text`` (``ge_proto_*_Build.txt``). Readers decode; they compute no metrics and make no
verdict. Bad input raises the module's own error type naming the file and what is wrong.
"""
