//! Any bytes: the action-list decoder never panics; decode -> encode -> decode is stable.
#![no_main]
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use openflow::action::Action;

fuzz_target!(|data: &[u8]| {
    if let Ok(list) = Action::decode_list(data) {
        let mut b = BytesMut::new();
        Action::encode_list(&list, &mut b).expect("a decoded list re-encodes");
        assert_eq!(Action::decode_list(&b).ok(), Some(list));
    }
});
