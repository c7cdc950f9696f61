package SKMirror;

# SKMirror -- what the t/mirror-*.t tests share: a private sk-mirror, its
# answers checked independently of libsk (openssl for every signature, the
# RFC 6962 model of SKTimeline for proofs), and forged timelines: a static
# "timeline" whose entries, chunks and checkpoints are made and signed here
# with the timeline's own key, served by a small HTTP server.
#
#   start_mirror(DIR, TIMELINES, KEY => VALUE...)  config + daemon;
#                     TIMELINES: [[tid, url, pubfile, origin?], ...]
#   restart_mirror(M)
#   mirror_status(M)                 decoded /status JSON (undef if none)
#   tl_state(M, TID)                 that timeline's state
#   wait_state(M, TID, STATE, SECS)  1 once it is in STATE
#   query(M, NAME[, SINCE])          { code, body }
#   check_answer(BODY, MIRRORPUB, {TID => [pubfile, origin]}[, NAME])
#                     { ok, err, name, range, timelines => {TID => {state, size,
#                     entries => [{sn, text}], last => text of the last
#                     entry, map => present|absent|unmapped}} } -- every
#                     signature and proof checked, the map proof too (and
#                     that the entries are the name's whole history); a
#                     range answer (Name: */<depth>/<hex>) needs NAME, the
#                     name asked, which must be in the range
#   map_value(SNS, LEAVES)           a name's map value (docs/protocol.md)
#   stamp(TEXT, TID, SN, TS, KEY)    the entry stamped and signed
#   checkpoint_note(ORIGIN, KEY, SIZE, ROOT, TS)
#   tfm_text(KEY, TID, SIZE, ROOT, TS)
#   forge(DIR, key => K, tid => T, entries => [...], chunks => [[a, b]...],
#         cp_size => N, cp_ts => T, cp_root => R, bad_chunk_sig => I,
#         garbage_chunk => BYTES (signed in place of chunk 0),
#         tiles => 1 (also /tile/entries/ bundles), tamper_bundle => SUB
#         (the last bundle's bytes in, what is served out))
#                     (re)writes the static timeline under DIR/www
#   serve_forged(DIR)                starts its HTTP server: { pid, port, url }
#                     a query with ?nonce= gets the file of the query
#                     without it: with DIR/nonce.key, followed by a
#                     trailer signed by that key for the nonce (a mirror
#                     that lags), else as it is (a replay on the path)
#   nonce_trailer(KEY, ANSWER, NONCE)  the trailer sk-mirror appends for
#                     NONCE (docs/protocol.md "Nonces"), a batch of one
#   strip_trailer(BODY)              BODY without its nonce trailer
#   nonce_answer(BODY, NONCE, MIRRORPUB)  the answer before BODY's trailer
#                     if that trailer is for NONCE, alone in its batch, and
#                     signed by the mirror's key; else undef

use strict;
use warnings;

use Exporter 'import';
use Digest::SHA qw(sha256 sha256_hex);
use File::Path qw(make_path remove_tree);
use IO::Compress::Bzip2 qw(bzip2 $Bzip2Error);
use IO::Socket::INET;
use JSON::PP;
use MIME::Base64 qw(encode_base64 decode_base64);
use SKTest;
use SKTimeline;
use Test::More ();

our @EXPORT = qw(start_mirror restart_mirror mirror_status tl_state
    wait_state query check_answer stamp checkpoint_note tfm_text forge
    serve_forged ed_sign unb64url forged_timelines stamp_history
    publish_forged start_timelines generated_timelines redis_or_skip
    map_value nonce_trailer strip_trailer nonce_answer);

our $MR = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-mirror';
our $GEN = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/bench/mirror_gen';

sub unb64url {
    my ($s) = @_;
    $s =~ tr{-_}{+/};
    $s .= '=' x ((4 - length($s) % 4) % 4);
    return decode_base64($s);
}

sub tmpfile { return "/tmp/sk-mr.$$." . int(rand(1e9)) }

sub ed_sign {
    my ($key, $msg) = @_;
    my $f = tmpfile();
    spew($f, $msg);
    my $r = run_cmd(['openssl', 'pkeyutl', '-sign', '-rawin', '-inkey', $key,
        '-in', $f]);
    unlink $f;
    die "openssl sign: $r->{err}" if $r->{rc} != 0;
    return $r->{out};
}

sub ed_verify {
    my ($pub, $msg, $sig) = @_;
    my ($f, $s) = (tmpfile(), tmpfile());
    spew($f, $msg);
    spew($s, $sig);
    my $r = run_cmd(['openssl', 'pkeyutl', '-verify', '-pubin', '-inkey',
        $pub, '-rawin', '-in', $f, '-sigfile', $s]);
    unlink $f, $s;
    return $r->{rc} == 0;
}

# The trailer binding ANSWER to NONCE (43 base64url characters), signed by
# KEY: leaf = SHA-256(0x00 | nonce | SHA-256(answer)), alone in its batch,
# so the root is the leaf.
sub nonce_trailer {
    my ($key, $answer, $nonce) = @_;
    local $SIG{CHLD} = 'DEFAULT';       # serve_dir ignores it: openssl's rc
    my $leaf = sha256("\x00" . unb64url($nonce) . sha256($answer));
    return "Nonce: $nonce\nNonce-Batch: 0 1\nNonce-Signature: "
        . SKTimeline::b64url(ed_sign($key, "SK-Mirror-Nonces: 1\n$leaf"))
        . "\n";
}

sub strip_trailer {
    my ($body) = @_;
    $body =~ s/Nonce: [^\n]*\nNonce-Batch: [^\n]*\nNonce-Signature: [^\n]*\n\z//;
    return $body;
}

sub nonce_answer {
    my ($body, $nonce, $mpub) = @_;
    my ($answer, $sig) = $body =~ /\A(.*\n)Nonce: \Q$nonce\E\n(?#
        )Nonce-Batch: 0 1\nNonce-Signature: ([A-Za-z0-9_-]{86})\n\z/s
        or return undef;
    return ed_verify($mpub, "SK-Mirror-Nonces: 1\n"
        . sha256("\x00" . unb64url($nonce) . sha256($answer)),
        unb64url($sig)) ? $answer : undef;
}

sub raw_pub {
    my ($pub) = @_;
    my $r = run_cmd(['openssl', 'pkey', '-pubin', '-in', $pub, '-outform',
        'DER']);
    return substr($r->{out}, -32);
}

# Mirror

sub write_conf {
    my ($m) = @_;
    my $c = join '', map { "$_ = $m->{conf}{$_}\n" } sort keys %{$m->{conf}};
    $c .= "timeline = @$_\n" for @{$m->{timelines}};
    $c .= "peer = $_\n" for @{$m->{peers}};
    spew("$m->{dir}/mirror.conf", $c);
}

sub start_mirror {
    my ($dir, $timelines, %conf) = @_;
    make_path($dir);
    my $port = free_port();
    my $peers = delete $conf{peers} // [];
    my $m = { dir => $dir, port => $port, url => "http://127.0.0.1:$port",
        log => "$dir/mirror.log", timelines => $timelines, peers => $peers,
        conf => { listen => "127.0.0.1:$port", data_dir => "$dir/data",
            poll_interval => 1, retry_min => 1, retry_max => 2,
            fetch_timeout_ms => 2000, %conf } };
    return restart_mirror($m);
}

# A start may rebuild the index first: 5,000 entries took 13 s under
# load on the ASan build, so wait for the port longer than that.
sub restart_mirror {
    my ($m) = @_;
    write_conf($m);
    $m->{pid} = run_daemon([$MR, '-c', "$m->{dir}/mirror.conf"], $m->{log});
    $m->{up} = wait_for_port($m->{port}, 30);
    $m->{pub} = "$m->{dir}/data/mirror.pub";
    return $m;
}

sub mirror_status {
    my ($m) = @_;
    my $r = http('GET', "$m->{url}/status");
    return undef if $r->{code} != 200;
    return eval { decode_json($r->{body}) };
}

sub tl_state {
    my ($m, $tid) = @_;
    my $s = mirror_status($m) or return '';
    for my $t (@{$s->{timelines}}) {
        return $t->{state} if $t->{tid} == $tid;
    }
    return '';
}

sub wait_state {
    my ($m, $tid, $state, $secs) = @_;
    return wait_until(sub { tl_state($m, $tid) eq $state }, $secs // 10)
        ? 1 : 0;
}

sub query {
    my ($m, $name, $since) = @_;
    return http('GET', "$m->{url}/query/$name"
        . (defined $since ? "?since=$since" : ''));
}

# Answers, checked the way docs/protocol.md "Mirror answers" says.

sub take_line {
    my ($s, $re, $what) = @_;
    $$s =~ s/\A($re)\n// or die "want $what at: "
        . substr($$s, 0, 60) . "\n";
    return $1;
}

sub take_bytes {
    my ($s, $n) = @_;
    die "length $n past the end\n" if $n > length $$s;
    return substr($$s, 0, $n, '');
}

sub verify_note {
    my ($note, $pub, $origin) = @_;
    my ($text, $sigs) = $note =~ /\A(.*?\n)\n(.*)\z/s
        or die "checkpoint: no blank line\n";
    my ($o, $size, $root) = split /\n/, $text;
    die "checkpoint: origin $o\n" if $o ne $origin;
    my $keyid = substr(sha256("$origin\n\x01" . raw_pub($pub)), 0, 4);
    for my $line (split /\n/, $sigs) {
        my ($name, $b) = $line =~ /\A\xe2\x80\x94 (\S+) (\S+)\z/ or next;
        my $raw = decode_base64($b);
        next if $name ne $origin || substr($raw, 0, 4) ne $keyid;
        return { size => $size, root => decode_base64($root),
            ts => ($text =~ /^Timestamp (\d+)$/m)[0] }
            if ed_verify($pub, $text, substr($raw, 4));
    }
    die "checkpoint: no valid signature by $origin\n";
}

# The name map (docs/protocol.md, "The name map"), modelled here.

sub map_value {
    my ($sns, $leaves) = @_;
    my $chain = "\0" x 32;
    $chain = sha256("\x13$chain$_") for @$leaves;
    return sha256("\x12" . pack('Q>Q>', scalar @$sns, $sns->[-1] // 0)
        . $chain);
}

sub key_bit { return vec($_[0], $_[1] ^ 7, 1) }     # MSB of byte 0 first

# "Map-Proof: ..." and its hash lines off $$s: { depth, bits, sibs,
# end, key, value }.
sub take_map_proof {
    my ($s) = @_;
    my ($depth, $bm, $end, $k, $v) = take_line($s, 'Map-Proof: \d+ \S+ '
        . '(?:empty|leaf [A-Za-z0-9_-]{43} [A-Za-z0-9_-]{43})', 'Map-Proof')
        =~ /: (\d+) (\S+) (empty|leaf)(?: (\S+) (\S+))?/;
    die "map proof: depth $depth\n" if $depth > 256;
    my $bits = $bm eq '-' ? '' : pack('H*', $bm);
    die "map proof: bitmap\n" if length($bits) != int(($depth + 7) / 8)
        || ($depth == 0) != ($bm eq '-');
    my $n = grep { key_bit($bits, $_) } 0 .. $depth - 1;
    my @sibs = map { decode_base64(take_line($s, '[A-Za-z0-9+\/]{43}=',
        'a map sibling')) } 1 .. $n;
    return { depth => $depth, bits => $bits, sibs => \@sibs, end => $end,
        key => defined $k ? unb64url($k) : undef,
        value => defined $v ? unb64url($v) : undef };
}

# Checked against root: (1, value) for present, (0) for absent.
sub verify_map_proof {
    my ($p, $key, $root) = @_;
    my $d = $p->{depth};
    my @sibs = @{$p->{sibs}};
    die "map proof: the last sibling is empty\n"
        if $d > 0 && !key_bit($p->{bits}, $d - 1);
    my $h = "\0" x 32;
    if ($p->{end} eq 'leaf') {
        for my $i (0 .. $d - 1) {
            die "map proof: the leaf is off the key's path\n"
                if key_bit($p->{key}, $i) != key_bit($key, $i);
        }
        $h = sha256("\x10$p->{key}$p->{value}");
    }
    for (my $i = $d - 1; $i >= 0; $i--) {
        my $sib = key_bit($p->{bits}, $i) ? pop @sibs : "\0" x 32;
        $h = key_bit($key, $i) ? sha256("\x11$sib$h") : sha256("\x11$h$sib");
    }
    die "map proof: not the Map-Hash\n" if $h ne $root;
    return $p->{end} eq 'leaf' && $p->{key} eq $key ? (1, $p->{value}) : (0);
}

# A range answer's Name, "*/<depth>/<hex>" (docs/protocol.md, "Range
# answers"): 1 if SHA-256 of $name starts with those depth bits.
sub in_range {
    my ($range, $name) = @_;
    my ($depth, $hex) = $range =~ m{\A\*/(\d+)/([0-9a-f]+|-)\z} or return 0;
    return 0 if $depth > 256;
    my $bits = unpack('B*', sha256($name));
    my $want = $hex eq '-' ? '' : unpack('B*', pack('H*', $hex));
    return 0 if length($want) != 8 * int(($depth + 7) / 8);
    return 0 if substr($want, $depth) =~ /1/;       # unused bits 0
    return substr($bits, 0, $depth) eq substr($want, 0, $depth);
}

sub check_answer {
    my ($body, $mpub, $keys, $asked) = @_;
    my $res = eval {
        my ($signed, $sig) = $body
            =~ /\A(.*\n)Signature: ([A-Za-z0-9_-]{86})\n\z/s
            or die "no Signature line at the end\n";
        die "mirror signature does not verify\n"
            unless ed_verify($mpub, $signed, unb64url($sig));
        my $s = $signed;
        my %a;
        take_line(\$s, 'SK-Mirror-Answer: 1', 'the header');
        $a{name} = (take_line(\$s, 'Name: \S+', 'Name') =~ /: (.*)/)[0];
        if ($a{name} =~ m{\A\*/}) {
            die "a range answer ($a{name}): the name asked is needed\n"
                unless defined $asked;
            die "a range answer ($a{name}) that $asked is not in\n"
                unless in_range($a{name}, $asked);
            $a{range} = $a{name};
            $a{name} = $asked;
        }
        $a{since} = (take_line(\$s, 'Since: \d+', 'Since') =~ /: (.*)/)[0];
        $a{time} = (take_line(\$s, 'Timestamp: \d+', 'Timestamp')
            =~ /: (.*)/)[0];
        $a{hash} = (take_line(\$s, 'Reneged-Hash: [0-9a-f]{8}',
            'Reneged-Hash') =~ /: (.*)/)[0];
        my $k = (take_line(\$s, 'Timelines: \d+', 'Timelines') =~ /: (.*)/)[0];
        my $prev = 0;
        for (1 .. $k) {
            my ($tid, $state) = take_line(\$s, 'Timeline: \d+ \w+',
                'Timeline') =~ /: (\d+) (\w+)/;
            die "timelines out of order\n" if $tid <= $prev;
            $prev = $tid;
            my $n = (take_line(\$s, 'Checkpoint: \d+', 'Checkpoint')
                =~ /: (.*)/)[0];
            my $t = { state => $state, entries => [] };
            $a{timelines}{$tid} = $t;
            my $cp;
            if ($n > 0) {
                my ($pub, $origin) = @{$keys->{$tid}};
                $cp = verify_note(take_bytes(\$s, $n), $pub, $origin);
                $t->{size} = $cp->{size};
                $t->{cp_ts} = $cp->{ts};
            }
            if ($n > 0 && $state eq 'Stuck') {
                # Served from its last checked state: the checkpoint's age.
                $t->{age} = (take_line(\$s, 'Checkpoint-Age: \d+',
                    'Checkpoint-Age') =~ /: (.*)/)[0];
                my $want = $a{time} > $cp->{ts} ? $a{time} - $cp->{ts} : 0;
                die "Checkpoint-Age $t->{age}, not $want\n"
                    if $t->{age} != $want;
            } elsif ($n > 0 && $state !~ /^(Idle|Syncing)$/) {
                die "a $state timeline with a checkpoint\n";
            }
            my $map;
            $t->{map} = 'unmapped' if $n > 0;
            if ($n > 0 && $cp->{size} > 0) {
                my $len = (take_line(\$s, 'Last-Entry: \d+', 'Last-Entry')
                    =~ /: (.*)/)[0];
                my $text = take_bytes(\$s, $len);
                my $p = (take_line(\$s, 'Proof: \d+', 'Proof') =~ /: (.*)/)[0];
                my @proof = map { decode_base64(take_line(\$s,
                    '[A-Za-z0-9+\/]{43}=', 'a hash')) } 1 .. $p;
                my $sn = $cp->{size} - 1;
                die "last entry: wrong SN or TID\n"
                    unless $text =~ /^SN: $sn$/m && $text =~ /^TID: $tid$/m;
                die "last entry: timeline signature\n"
                    unless check_stamp($text, $keys->{$tid}[0]);
                die "last entry: inclusion proof\n"
                    unless verify_inclusion(leaf_hash($text), $sn,
                        $cp->{size}, \@proof, $cp->{root});
                $t->{last} = $text;
                if ($text =~ /\AMap-Root: 1$/m) {
                    my ($h) = $text =~ /^Map-Hash: (\S+)$/m;
                    my ($present, $value) = verify_map_proof(
                        take_map_proof(\$s), sha256($a{name}), unb64url($h));
                    $map = { present => $present, value => $value };
                    $t->{map} = $present ? 'present' : 'absent';
                }
            }
            my $m = (take_line(\$s, 'Entries: \d+', 'Entries') =~ /: (.*)/)[0];
            die "entries without a checkpoint\n" if $m > 0 && !$cp;
            for (1 .. $m) {
                my ($sn, $len) = take_line(\$s, 'Entry: \d+ \d+', 'Entry')
                    =~ /: (\d+) (\d+)/;
                my $text = take_bytes(\$s, $len);
                my $p = (take_line(\$s, 'Proof: \d+', 'Proof') =~ /: (.*)/)[0];
                my @proof = map { decode_base64(take_line(\$s,
                    '[A-Za-z0-9+\/]{43}=', 'a hash')) } 1 .. $p;
                die "SN $sn not in the checkpoint\n" if $sn >= $cp->{size};
                die "entry SN $sn: wrong SN or TID\n"
                    unless $text =~ /^SN: $sn$/m && $text =~ /^TID: $tid$/m;
                die "entry SN $sn: not for $a{name}\n"
                    unless $text =~ /^Name: \Q$a{name}\E$/m;
                die "entry SN $sn: timeline signature\n"
                    unless check_stamp($text, $keys->{$tid}[0]);
                die "entry SN $sn: inclusion proof\n"
                    unless verify_inclusion(leaf_hash($text), $sn,
                        $cp->{size}, \@proof, $cp->{root});
                push @{$t->{entries}}, { sn => $sn, text => $text };
            }
            if ($map) {
                my @e = @{$t->{entries}};
                die "entries of an absent name\n" if !$map->{present} && @e;
                die "entries: not the name's whole history\n"
                    if $map->{present} && map_value([map { $_->{sn} } @e],
                        [map { leaf_hash($_->{text}) } @e]) ne $map->{value};
            }
        }
        die "bytes after the last timeline\n" if length $s;
        if ($a{range}) {
            for my $t (values %{$a{timelines}}) {
                die "a range answer with a timeline that does not prove the "
                    . "name absent\n"
                    if ($t->{size} // 0) > 0 && $t->{map} ne 'absent';
            }
        }
        \%a;
    };
    return { ok => 0, err => $@ } if !$res;
    $res->{ok} = 1;
    return $res;
}

sub check_stamp {
    my ($text, $pub) = @_;
    my ($sig) = $text =~ /^Signature: (\S+)$/m or return 0;
    (my $na = $text) =~ s/^Signature: \S+$/Signature: N\/A/m;
    return ed_verify($pub, $na, unb64url($sig));
}

# The redis-server to run; without it, sk-timeline, sk-mirror, openssl,
# curl or redis-cli the whole test is skipped.
sub redis_or_skip {
    my $redis = has_cmd('redis-server');
    Test::More::plan(skip_all => 'redis-server is not installed')
        unless $redis;
    Test::More::plan(skip_all => 'sk-timeline or sk-mirror not built')
        unless -x $SKTimeline::TL && -x $MR;
    Test::More::plan(skip_all => 'no openssl, curl or redis-cli')
        unless has_cmd('openssl') && has_cmd('curl') && has_cmd('redis-cli');
    return $redis;
}

# Real timelines @$tids under $d/tlTID (start_timeline's options in %opt,
# the operator's key $d/operator.pub), each given @$entries in order:
# ({tid => timeline}, [[tid, url, public key file] ...] for start_mirror,
# {tid => [each append's response]}).
sub start_timelines {
    my ($d, $tids, $entries, %opt) = @_;
    my (%t, @tl, %got);
    for my $tid (@$tids) {
        mkdir "$d/tl$tid";
        $t{$tid} = SKTimeline::start_timeline("$d/tl$tid", tid => $tid,
            operator_key => "$d/operator.pub", %opt);
        $got{$tid} = [map { SKTimeline::append($t{$tid}, $_) } @$entries];
        push @tl, [$tid, $t{$tid}{url}, "$d/tl$tid/timeline.pub"];
    }
    return (\%t, \@tl, \%got);
}

# Real timelines @$tids under $d/tlTID holding $count entries each, made
# by mirror_gen (no append over HTTP: thousands in a second), their signed
# head written by --repair, started with start_timeline's options %opt:
# ({tid => timeline}, [[tid, url, public key file] ...] for start_mirror,
# {tid => [public key file, origin]} for check_answer).
sub generated_timelines {
    my ($d, $tids, $count, %opt) = @_;
    my (%t, @tl, %keys);
    for my $tid (@$tids) {
        my $dir = "$d/tl$tid";
        mkdir $dir;
        ed25519_key($dir, 'timeline');
        my $r = run_cmd([$GEN, 'gen', "$dir/timeline.key", $tid, $count,
            $dir]);
        Test::More::is($r->{rc}, 0, "timeline $tid: $count entries made")
            or Test::More::BAIL_OUT($r->{err});
        spew("$dir/tl.conf",
            "listen = 127.0.0.1:1\ndata_dir = $dir\ntid = $tid\n");
        $r = run_cmd([$SKTimeline::TL, '--repair', '-c', "$dir/tl.conf"]);
        Test::More::is($r->{rc}, 0, "timeline $tid: signed head written")
            or Test::More::diag($r->{err});
        $t{$tid} = SKTimeline::start_timeline($dir, tid => $tid, %opt);
        $t{$tid}{up} ||= wait_for_port($t{$tid}{port}, 120);
        Test::More::ok($t{$tid}{up}, "timeline $tid listens")
            or Test::More::BAIL_OUT(slurp($t{$tid}{log}));
        $keys{$tid} = ["$dir/timeline.pub", "sk-timeline-$tid"];
        push @tl, [$tid, $t{$tid}{url}, $keys{$tid}[0]];
    }
    return (\%t, \@tl, \%keys);
}

# Forging: a timeline made here, signed with its own key.

sub stamp {
    my ($text, $tid, $sn, $ts, $key) = @_;
    $text =~ s/^SN: .*$/SN: $sn/m;
    $text =~ s/^TID: .*$/TID: $tid/m;
    $text =~ s/^Timestamp: .*$/Timestamp: $ts/m;
    $text =~ s/^Signature: .*$/Signature: N\/A/m;
    my $sig = b64url(ed_sign($key, $text));
    $text =~ s/^Signature: N\/A$/Signature: $sig/m;
    return $text;
}

# Timelines @tids to forge under $d: {tid => {dir => $d/fTID (made),
# key => its own key, tid}}, and {tid => [public key file, origin]}, as a
# mirror's or client's configuration names them.
sub forged_timelines {
    my ($d, @tids) = @_;
    my (%tl, %keys);
    for my $tid (@tids) {
        my $dir = "$d/f$tid";
        mkdir $dir;
        $tl{$tid} = { dir => $dir, key => SKTimeline::ed25519_key($d,
            "tl$tid"), tid => $tid };
        $keys{$tid} = ["$d/tl$tid.pub", "sk-timeline-$tid"];
    }
    return (\%tl, \%keys);
}

# Entries [TEXT, TS] ... stamped as SN 0, 1, ... of forged timeline $t.
sub stamp_history {
    my ($t, @spec) = @_;
    my $sn = 0;
    return [map { stamp($_->[0], $t->{tid}, $sn++, $_->[1], $t->{key}) }
        @spec];
}

# Forge $t's directory from $entries (forge's other options in %a).
sub publish_forged {
    my ($t, $entries, %a) = @_;
    forge($t->{dir}, key => $t->{key}, tid => $t->{tid},
        entries => $entries, %a);
}

sub checkpoint_note {
    my ($origin, $key, $size, $root, $ts) = @_;
    my $text = "$origin\n$size\n" . encode_base64($root, '')
        . "\nTimestamp $ts\n";
    (my $pub = $key) =~ s/\.key$/.pub/;
    my $keyid = substr(sha256("$origin\n\x01" . raw_pub($pub)), 0, 4);
    return "$text\n\xe2\x80\x94 $origin "
        . encode_base64($keyid . ed_sign($key, $text), '') . "\n";
}

sub tfm_text {
    my ($key, $tid, $size, $root, $ts) = @_;
    my $t = sub {
        my ($sig) = @_;
        my $sn = $size - 1;
        return "Timeline-Freshness: 1\nMax-Published-SN: $sn\n"
            . "Max-Published-Timestamp: $ts\nMax-SN: $sn\n"
            . "Max-Timestamp: $ts\nRoot-Hash: " . b64url($root)
            . "\nSignature: $sig\nTID: $tid\nTimestamp: $ts\n"
            . "Tree-Size: $size\n\n";
    };
    return $t->(b64url(ed_sign($key, $t->('N/A'))));
}

sub url_file {
    my ($dir, $path) = @_;
    (my $f = $path) =~ s{/}{%}g;
    return "$dir/www/$f";
}

sub put {
    my ($dir, $path, $body, $status) = @_;
    spew(url_file($dir, $path), $body);
    spew(url_file($dir, $path) . '.status', $status) if $status;
}

sub forge {
    my ($dir, %a) = @_;
    my @e = @{$a{entries}};
    my $key = $a{key};
    my $tid = $a{tid};
    my $origin = $a{origin} // "sk-timeline-$tid";
    my @leaves = map { leaf_hash($_) } @e;
    my $w = "$dir.stage";
    remove_tree("$w/www");
    make_path("$w/www");
    my $size = $a{cp_size} // scalar @e;
    my $ts = $a{cp_ts} // (@e ? ($e[$size - 1] =~ /^Timestamp: (\d+)$/m)[0]
        : 1) // 1;
    my $root = $a{cp_root} // mth(@leaves[0 .. $size - 1]);
    put($w, '/checkpoint', checkpoint_note($origin, $key, $size, $root, $ts));
    my @lines;
    my $i = 0;
    for my $c (@{$a{chunks} // [[0, $#e]]}) {
        my ($f, $l) = @$c;
        my $lts = ($e[$l] =~ /^Timestamp: (\d+)$/m)[0];
        my $text = join('', @e[$f .. $l])
            . tfm_text($key, $tid, $l + 1, mth(@leaves[0 .. $l]), $lts);
        my $bz;
        bzip2(\$text => \$bz) or die "bzip2: $Bzip2Error";
        $bz = $a{garbage_chunk}
            if defined $a{garbage_chunk} && $i == 0;
        my $sig = b64url(ed_sign($key, $bz));
        $sig = b64url(ed_sign($key, "not the chunk"))
            if defined $a{bad_chunk_sig} && $a{bad_chunk_sig} == $i;
        put($w, "/chunks/$f-$l.bz2", $bz);
        push @lines, [$l, "/chunks/$f-$l.bz2 $f $l $sig\n"];
        $i++;
    }
    put($w, '/chunks', join('', map { $_->[1] } @lines));
    for my $k (0 .. $#e) {
        my @after = grep { $_->[0] > $k } @lines;
        put($w, "/chunks/since/$k", join('', map { $_->[1] } @after),
            @after ? undef : 304);
    }
    put($w, "/entry/$_", $e[$_]) for 0 .. $size - 1;
    # The copies Incorporate entries refer to: { SN => text }.
    put($w, "/incorporated/$_", $a{incorporated}{$_})
        for keys %{$a{incorporated} // {}};
    if ($a{tiles}) {
        # tlog-tiles entry bundles up to the checkpoint: full ones, then
        # the partial last one; tamper_bundle changes the last one.
        for (my $n = 0; $n * 256 < $size; $n++) {
            my $wd = $size - $n * 256 >= 256 ? 256 : $size - $n * 256;
            my $b = join '', map { pack('n', length $_) . $_ }
                @e[$n * 256 .. $n * 256 + $wd - 1];
            $b = $a{tamper_bundle}->($b)
                if $a{tamper_bundle} && ($n + 1) * 256 >= $size;
            put($w, '/tile/entries/' . tile_n($n)
                . ($wd == 256 ? '' : ".p/$wd"), $b);
        }
        # The consistency proofs a mirror committing every 256 entries
        # asks for; bad_proof serves a well-formed wrong one.
        for (my $k = 256; $k < $size; $k += 256) {
            my @p = subproof($k, 1, @leaves[0 .. $size - 1]);
            $p[0] = "\x55" x 32 if $a{bad_proof};
            put($w, "/proof/consistency?from=$k&to=$size",
                join('', map { encode_base64($_, '') . "\n" } @p));
        }
    }
    # Swap in at once: the server never sees half a timeline.
    remove_tree("$dir/www.old");
    rename("$dir/www", "$dir/www.old") if -d "$dir/www";
    rename("$w/www", "$dir/www") or die "forge: rename: $!";
    remove_tree("$dir/www.old", $w);
}

# RFC 9162 2.1.4.1: SUBPROOF(m, D[n], b) over leaf hashes.
sub subproof {
    my ($m, $b, @d) = @_;
    return $b ? () : (mth(@d)) if $m == @d;
    my $k = 1;
    $k *= 2 while $k * 2 < @d;
    return $m <= $k
        ? (subproof($m, $b, @d[0 .. $k - 1]), mth(@d[$k .. $#d]))
        : (subproof($m - $k, 0, @d[$k .. $#d]), mth(@d[0 .. $k - 1]));
}

# N of a tile path: 3-digit elements, all but the last prefixed "x".
sub tile_n {
    my ($n) = @_;
    my @g = sprintf('%03d', $n % 1000);
    while (($n = int($n / 1000)) > 0) {
        unshift @g, sprintf('x%03d', $n % 1000);
    }
    return join '/', @g;
}

# The forged timeline's HTTP server (run in its own process).
sub serve_dir {
    my ($dir, $port) = @_;
    my $srv = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
        LocalPort => $port, Listen => 64, ReuseAddr => 1)
        or die "listen: $!";
    $SIG{CHLD} = 'IGNORE';
    while (my $c = $srv->accept) {
        my $req = '';
        while (my $l = <$c>) {
            $req .= $l;
            last if $l =~ /^\r?\n$/;
        }
        my ($path) = $req =~ /^GET (\S+) HTTP/;
        print STDERR "GET $path\n" if defined $path;
        my $f = defined $path ? url_file($dir, $path) : '';
        my $nonce;
        if (defined $path && !-f $f
            && $path =~ m{^(/query/[^?]*)\?nonce=([A-Za-z0-9_-]{43})$})
        {
            ($f, $nonce) = (url_file($dir, $1), $2);
        }
        my ($code, $body) = (404, "no such resource\n");
        if (defined $path && -f $f) {
            $body = slurp($f);
            $code = -f "$f.status" ? slurp("$f.status") : 200;
            $body = '' if $code == 304;
            $body .= nonce_trailer("$dir/nonce.key", $body, $nonce)
                if defined $nonce && $code == 200 && -f "$dir/nonce.key";
        }
        my $msg = { 200 => 'OK', 304 => 'Not Modified',
            404 => 'Not Found' }->{$code} // 'X';
        print $c "HTTP/1.1 $code $msg\r\nConnection: close\r\n"
            . "Content-Length: " . length($body) . "\r\n\r\n$body";
        close $c;
    }
}

sub serve_forged {
    my ($dir) = @_;
    my $port = free_port();
    my $pid = run_daemon(['perl', "-I$SKTest::ROOT/t/lib", '-MSKMirror',
        '-e', 'SKMirror::serve_dir(@ARGV)', $dir, $port], "$dir.log");
    wait_for_port($port, 10);
    return { pid => $pid, port => $port, url => "http://127.0.0.1:$port" };
}

1;
