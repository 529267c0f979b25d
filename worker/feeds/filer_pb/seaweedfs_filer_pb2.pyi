from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Entry(_message.Message):
    __slots__ = ("name", "is_directory", "chunks", "attributes", "extended")
    class ExtendedEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    IS_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    EXTENDED_FIELD_NUMBER: _ClassVar[int]
    name: str
    is_directory: bool
    chunks: _containers.RepeatedCompositeFieldContainer[FileChunk]
    attributes: FuseAttributes
    extended: _containers.ScalarMap[str, bytes]
    def __init__(self, name: _Optional[str] = ..., is_directory: _Optional[bool] = ..., chunks: _Optional[_Iterable[_Union[FileChunk, _Mapping]]] = ..., attributes: _Optional[_Union[FuseAttributes, _Mapping]] = ..., extended: _Optional[_Mapping[str, bytes]] = ...) -> None: ...

class EventNotification(_message.Message):
    __slots__ = ("old_entry", "new_entry", "delete_chunks", "new_parent_path")
    OLD_ENTRY_FIELD_NUMBER: _ClassVar[int]
    NEW_ENTRY_FIELD_NUMBER: _ClassVar[int]
    DELETE_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    NEW_PARENT_PATH_FIELD_NUMBER: _ClassVar[int]
    old_entry: Entry
    new_entry: Entry
    delete_chunks: bool
    new_parent_path: str
    def __init__(self, old_entry: _Optional[_Union[Entry, _Mapping]] = ..., new_entry: _Optional[_Union[Entry, _Mapping]] = ..., delete_chunks: _Optional[bool] = ..., new_parent_path: _Optional[str] = ...) -> None: ...

class FileChunk(_message.Message):
    __slots__ = ("file_id", "offset", "size", "modified_ts_ns", "e_tag")
    FILE_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    MODIFIED_TS_NS_FIELD_NUMBER: _ClassVar[int]
    E_TAG_FIELD_NUMBER: _ClassVar[int]
    file_id: str
    offset: int
    size: int
    modified_ts_ns: int
    e_tag: str
    def __init__(self, file_id: _Optional[str] = ..., offset: _Optional[int] = ..., size: _Optional[int] = ..., modified_ts_ns: _Optional[int] = ..., e_tag: _Optional[str] = ...) -> None: ...

class FuseAttributes(_message.Message):
    __slots__ = ("file_size", "mtime", "md5", "mtime_ns")
    FILE_SIZE_FIELD_NUMBER: _ClassVar[int]
    MTIME_FIELD_NUMBER: _ClassVar[int]
    MD5_FIELD_NUMBER: _ClassVar[int]
    MTIME_NS_FIELD_NUMBER: _ClassVar[int]
    file_size: int
    mtime: int
    md5: bytes
    mtime_ns: int
    def __init__(self, file_size: _Optional[int] = ..., mtime: _Optional[int] = ..., md5: _Optional[bytes] = ..., mtime_ns: _Optional[int] = ...) -> None: ...

class GetFilerConfigurationRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetFilerConfigurationResponse(_message.Message):
    __slots__ = ("dir_buckets", "signature", "version")
    DIR_BUCKETS_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    dir_buckets: str
    signature: int
    version: str
    def __init__(self, dir_buckets: _Optional[str] = ..., signature: _Optional[int] = ..., version: _Optional[str] = ...) -> None: ...

class SubscribeMetadataRequest(_message.Message):
    __slots__ = ("client_name", "path_prefix", "since_ns", "signature", "client_id", "client_epoch")
    CLIENT_NAME_FIELD_NUMBER: _ClassVar[int]
    PATH_PREFIX_FIELD_NUMBER: _ClassVar[int]
    SINCE_NS_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_EPOCH_FIELD_NUMBER: _ClassVar[int]
    client_name: str
    path_prefix: str
    since_ns: int
    signature: int
    client_id: int
    client_epoch: int
    def __init__(self, client_name: _Optional[str] = ..., path_prefix: _Optional[str] = ..., since_ns: _Optional[int] = ..., signature: _Optional[int] = ..., client_id: _Optional[int] = ..., client_epoch: _Optional[int] = ...) -> None: ...

class SubscribeMetadataResponse(_message.Message):
    __slots__ = ("directory", "event_notification", "ts_ns")
    DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    EVENT_NOTIFICATION_FIELD_NUMBER: _ClassVar[int]
    TS_NS_FIELD_NUMBER: _ClassVar[int]
    directory: str
    event_notification: EventNotification
    ts_ns: int
    def __init__(self, directory: _Optional[str] = ..., event_notification: _Optional[_Union[EventNotification, _Mapping]] = ..., ts_ns: _Optional[int] = ...) -> None: ...
