{
  "targets": [{
    "target_name": "fuse_ll",
    "cflags": [
      "-g",
      "-O2",
      "-Wall",
      "-Wno-unused-parameter",
      "<!@(pkg-config --cflags fuse3)"
    ],
    "defines": [
      "NAPI_VERSION=8"
    ],
    "libraries": [
      "<!@(pkg-config --libs fuse3)"
    ],
    "sources": [
      "fuse-ll.c"
    ]
  }]
}
