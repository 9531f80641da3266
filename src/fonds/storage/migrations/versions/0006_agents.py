"""agents and events

The four agent types (their uniqueness hash and authorized authority id kept beside the JSON)
and events.

Revision ID: 0006_agents
Revises: 0005_auth_generation
Create Date: 2026-11-24 06:58:22.549263
"""

from alembic import op
import sqlalchemy as sa


revision = '0006_agents'
down_revision = '0005_auth_generation'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('agent_corporate_entity',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('repo_id', sa.Integer(), nullable=True),
    sa.Column('lock_version', sa.Integer(), nullable=False),
    sa.Column('json', sa.LargeBinary(), nullable=False),
    sa.Column('create_time', sa.DateTime(), nullable=False),
    sa.Column('system_mtime', sa.DateTime(), nullable=False),
    sa.Column('user_mtime', sa.DateTime(), nullable=False),
    sa.Column('created_by', sa.String(length=255), nullable=True),
    sa.Column('last_modified_by', sa.String(length=255), nullable=True),
    sa.Column('agent_sha1', sa.String(length=64), nullable=True),
    sa.Column('authority_id', sa.String(length=255), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_agent_corporate_entity')),
    sa.UniqueConstraint('agent_sha1', name=op.f('uq_agent_corporate_entity_agent_sha1')),
    sa.UniqueConstraint('authority_id', name=op.f('uq_agent_corporate_entity_authority_id')),
    sqlite_autoincrement=True
    )
    with op.batch_alter_table('agent_corporate_entity', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_agent_corporate_entity_system_mtime'), ['system_mtime'], unique=False)

    op.create_table('agent_family',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('repo_id', sa.Integer(), nullable=True),
    sa.Column('lock_version', sa.Integer(), nullable=False),
    sa.Column('json', sa.LargeBinary(), nullable=False),
    sa.Column('create_time', sa.DateTime(), nullable=False),
    sa.Column('system_mtime', sa.DateTime(), nullable=False),
    sa.Column('user_mtime', sa.DateTime(), nullable=False),
    sa.Column('created_by', sa.String(length=255), nullable=True),
    sa.Column('last_modified_by', sa.String(length=255), nullable=True),
    sa.Column('agent_sha1', sa.String(length=64), nullable=True),
    sa.Column('authority_id', sa.String(length=255), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_agent_family')),
    sa.UniqueConstraint('agent_sha1', name=op.f('uq_agent_family_agent_sha1')),
    sa.UniqueConstraint('authority_id', name=op.f('uq_agent_family_authority_id')),
    sqlite_autoincrement=True
    )
    with op.batch_alter_table('agent_family', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_agent_family_system_mtime'), ['system_mtime'], unique=False)

    op.create_table('agent_person',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('repo_id', sa.Integer(), nullable=True),
    sa.Column('lock_version', sa.Integer(), nullable=False),
    sa.Column('json', sa.LargeBinary(), nullable=False),
    sa.Column('create_time', sa.DateTime(), nullable=False),
    sa.Column('system_mtime', sa.DateTime(), nullable=False),
    sa.Column('user_mtime', sa.DateTime(), nullable=False),
    sa.Column('created_by', sa.String(length=255), nullable=True),
    sa.Column('last_modified_by', sa.String(length=255), nullable=True),
    sa.Column('agent_sha1', sa.String(length=64), nullable=True),
    sa.Column('authority_id', sa.String(length=255), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_agent_person')),
    sa.UniqueConstraint('agent_sha1', name=op.f('uq_agent_person_agent_sha1')),
    sa.UniqueConstraint('authority_id', name=op.f('uq_agent_person_authority_id')),
    sqlite_autoincrement=True
    )
    with op.batch_alter_table('agent_person', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_agent_person_system_mtime'), ['system_mtime'], unique=False)

    op.create_table('agent_software',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('repo_id', sa.Integer(), nullable=True),
    sa.Column('lock_version', sa.Integer(), nullable=False),
    sa.Column('json', sa.LargeBinary(), nullable=False),
    sa.Column('create_time', sa.DateTime(), nullable=False),
    sa.Column('system_mtime', sa.DateTime(), nullable=False),
    sa.Column('user_mtime', sa.DateTime(), nullable=False),
    sa.Column('created_by', sa.String(length=255), nullable=True),
    sa.Column('last_modified_by', sa.String(length=255), nullable=True),
    sa.Column('agent_sha1', sa.String(length=64), nullable=True),
    sa.Column('authority_id', sa.String(length=255), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_agent_software')),
    sa.UniqueConstraint('agent_sha1', name=op.f('uq_agent_software_agent_sha1')),
    sa.UniqueConstraint('authority_id', name=op.f('uq_agent_software_authority_id')),
    sqlite_autoincrement=True
    )
    with op.batch_alter_table('agent_software', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_agent_software_system_mtime'), ['system_mtime'], unique=False)

    op.create_table('event',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('repo_id', sa.Integer(), nullable=True),
    sa.Column('lock_version', sa.Integer(), nullable=False),
    sa.Column('json', sa.LargeBinary(), nullable=False),
    sa.Column('create_time', sa.DateTime(), nullable=False),
    sa.Column('system_mtime', sa.DateTime(), nullable=False),
    sa.Column('user_mtime', sa.DateTime(), nullable=False),
    sa.Column('created_by', sa.String(length=255), nullable=True),
    sa.Column('last_modified_by', sa.String(length=255), nullable=True),
    sa.Column('refid', sa.String(length=255), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_event')),
    sa.UniqueConstraint('refid', name=op.f('uq_event_refid')),
    sqlite_autoincrement=True
    )
    with op.batch_alter_table('event', schema=None) as batch_op:
        batch_op.create_index('ix_event_repo_id_id', ['repo_id', 'id'], unique=False)
        batch_op.create_index(batch_op.f('ix_event_system_mtime'), ['system_mtime'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('event', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_event_system_mtime'))
        batch_op.drop_index('ix_event_repo_id_id')

    op.drop_table('event')
    with op.batch_alter_table('agent_software', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_agent_software_system_mtime'))

    op.drop_table('agent_software')
    with op.batch_alter_table('agent_person', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_agent_person_system_mtime'))

    op.drop_table('agent_person')
    with op.batch_alter_table('agent_family', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_agent_family_system_mtime'))

    op.drop_table('agent_family')
    with op.batch_alter_table('agent_corporate_entity', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_agent_corporate_entity_system_mtime'))

    op.drop_table('agent_corporate_entity')
