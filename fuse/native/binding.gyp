{
  "targets": [{
    "target_name": "fuse",
    "include_dirs": [
      "<!(node -e \"require('napi-macros')\")"
    ],
    "cflags": [
      "-g",
      "-O3",
      "-Wall",
      "<!@(pkg-config --cflags fuse)"
    ],
    "defines": [
      "NAPI_VERSION=8"
    ],
    "libraries": [
      "<!@(pkg-config --libs fuse)"
    ],
    "sources": [
      "fuse-native.c"
    ]
  }]
}
