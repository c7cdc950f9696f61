package SKMilter;

# SKMilter -- the MTA side of the milter protocol (version 6, as Postfix
# and Sendmail speak it), in a few lines, to drive sk-milter with exactly
# the packets a test wants, well-formed or not.
#
#   my $m = SKMilter->connect($port) or die;   # TCP, 127.0.0.1
#   my ($cmd, $data) = $m->negotiate;          # 'O' and the milter's offer
#   $m->send('D', "M{tls_version}\0TLSv1.3\0"); # one packet: command, data
#   $m->raw($bytes);                           # bytes as they are
#   $m->done;                                  # no more bytes (half close)
#   my ($cmd, $data) = $m->reply;              # next packet, () at EOF or
#                                              # after SECS (default 10)
#   $m->closed                                 # 1 once the milter closed
#   macros(NAME => VALUE, ...)                 # "NAME\0VALUE\0..."
#
# negotiate offers every action and every "do not send" protocol step but
# no "no reply" step, so the milter answers every command it is sent.

use strict;
use warnings;

use Exporter 'import';
use IO::Select;
use IO::Socket::INET;

our @EXPORT_OK = qw(macros);

use constant OFFER_ACTIONS  => 0x1ff;
use constant OFFER_PROTOCOL => 0x1fffff & ~0xff080;    # no SMFIP_NR_*

sub connect {
    my ($class, $port) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
        Proto => 'tcp', Timeout => 10) or return undef;
    binmode $s;
    return bless { s => $s, buf => '' }, $class;
}

sub raw {
    my ($self, $bytes) = @_;
    local $SIG{PIPE} = 'IGNORE';
    return defined(syswrite($self->{s}, $bytes));
}

sub done {
    my ($self) = @_;
    return shutdown($self->{s}, 1);
}

sub send {
    my ($self, $cmd, $data) = @_;
    $data //= '';
    return $self->raw(pack('N', 1 + length $data) . $cmd . $data);
}

sub negotiate {
    my ($self) = @_;
    $self->send('O', pack('NNN', 6, OFFER_ACTIONS, OFFER_PROTOCOL));
    return $self->reply;
}

sub fill {
    my ($self, $want, $secs) = @_;
    my $sel = IO::Select->new($self->{s});
    while (length $self->{buf} < $want) {
        return 0 unless $sel->can_read($secs);
        my $n = sysread($self->{s}, $self->{buf}, 65536, length $self->{buf});
        if (!$n) {
            $self->{eof} = 1;
            return 0;
        }
    }
    return 1;
}

sub reply {
    my ($self, $secs) = @_;
    $secs //= 10;
    return () unless $self->fill(4, $secs);
    my $len = unpack('N', $self->{buf});
    return () unless $self->fill(4 + $len, $secs) && $len >= 1;
    my $pkt = substr($self->{buf}, 0, 4 + $len, '');
    return (substr($pkt, 4, 1), substr($pkt, 5));
}

sub closed {
    my ($self, $secs) = @_;
    $self->fill(length($self->{buf}) + 1, $secs // 10);
    return $self->{eof} ? 1 : 0;
}

sub macros {
    my (@kv) = @_;
    return join('', map { "$_\0" } @kv);
}

1;
